"""Serving: KV cache, speculative decoding, batching simulators."""
