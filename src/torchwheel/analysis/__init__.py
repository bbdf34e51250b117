"""What a wheel does: each compiled member's torch and CPython facts and kind (``usage``:
stable shim or unstable libtorch), the per-wheel facts the rules judge, releases, and compat's
comparison with a torch's exports."""
