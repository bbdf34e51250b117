"""``torchwheel scan``: every wheel of folders and whole indexes read and checked, one JSON
Lines record per wheel (``api.scan_one``), resumable, on a process pool (``docs/scan.md``).

``listing`` lists the work, ``scanline`` makes one wheel's line (read whole), ``partial``
makes it from the HTTP ranges a hosted wheel needs (``--partial``; each member read by
``partial_member``), ``jsonl`` appends the lines and says what a resume trusts, ``run`` maps
the work over the pool, ``progress`` reports on stderr, ``report`` counts a finished file
without reading a wheel again.
"""
