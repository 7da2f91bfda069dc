"""Machine right-sizing: the cheapest catalogue machine each job fits, from measured memory and CPU.

Entry points: `sizing.machine_fit.fit_machines` and `sizing.catalogue.resolve_catalogues`.
"""
