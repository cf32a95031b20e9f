"""Data files shipped with the package (measurements, corpora), each with its source."""
