"""One module per reader architecture; shared layers live in concur.approaches.reader.layers."""
