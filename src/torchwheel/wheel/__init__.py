"""The archive alone: reading a wheel, an unpacked wheel or an installed distribution as
members and metadata (bounded by ``limits``), RECORD, and writing a new wheel atomically.
Nothing here knows what a binary or torch is."""
