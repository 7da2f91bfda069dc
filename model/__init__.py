"""The shared model below every layer: the result, run and facts columns and the labels key.

Parsers produce these frames, the store writes them, the codec encodes them and the domain
reads them, so they live in neither the producer's nor the consumer's package.
"""
