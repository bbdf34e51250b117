"""``python -m torchwheel`` is the console script."""

from torchwheel.cli import main

main()
