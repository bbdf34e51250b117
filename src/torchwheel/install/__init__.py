"""The installer side: choose, among candidate wheels, the one that loads on a target torch,
install it, and publish so that other installers choose right.

``candidates`` reads what is on offer (metadata only), ``target`` describes where it goes,
``choose`` decides (a pure function of the two), ``installing`` writes with ``installer``.
"""
