"""What ``tag`` and ``repair`` write: a pure plan from facts and options (tags, the torch
requirement, names, a release's shared set, the variant copy), then ``apply``, the only
place that writes a wheel."""
