"""Data: the unified MRQA-format model, readers of upstream formats, transforms, sources."""
