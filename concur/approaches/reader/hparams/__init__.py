"""Hyperparameters of each reader: the training recipe all share (base) and one module per model.

These modules must not import torch: specs are validated against them without it.
"""
