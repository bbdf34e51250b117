"""What torch is: its releases and builds, which C++ names are libtorch's unstable API, what
its own libraries are, and which torch a wheel's metadata says it loads on (the need and the
verdict). The tables these are judged with live in ``tables``.
"""
