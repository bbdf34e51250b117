"""Choosing a wheel: among candidate wheels, the one that loads on a target torch, and why
every other one does not.

``discovery`` finds what is on offer (files, folders, indexes; ``remote``: which hosted wheels
to download), ``candidates`` reads each one (metadata only), ``target`` describes where it
goes, ``choose`` decides (a pure function of the two), ``outcome`` gives each project its
exit code and ``reasons`` says why each other wheel was not chosen.
"""
