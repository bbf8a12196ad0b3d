"""The registry: benchmarks and approaches declared as TOML specs, looked up by stable id."""

from concur.registry.registry import Registry, default_registry
from concur.registry.specs import ApproachSpec, BenchmarkSpec, SourceFile

__all__ = ["ApproachSpec", "BenchmarkSpec", "Registry", "SourceFile", "default_registry"]
