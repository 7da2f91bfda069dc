"""Demo data: a synthetic CI history for `laptime demo-data`, the benchmarks and the tests."""
