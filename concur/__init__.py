"""concur: concurrence studies of extractive question answering.

Two benchmarks have high concurrence on a set of modeling approaches when they rank those
approaches alike (Liu, Lee, Jia & Liang, "Do Question Answering Modeling Improvements Hold
Across Benchmarks?"). This package holds the data model, the official metrics, the registry
of benchmarks and approaches, the job runner and its store.
"""

__version__ = "0.1.0"

# Part of every job key. Bump it when a change alters what a finished job would compute
# (training loop, decoding, metric), so results of older code are not taken for current ones.
# Changes to data conversion need no bump: they change the benchmark's data hash instead.
RESULT_VERSION = 1
