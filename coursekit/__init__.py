"""coursekit: the computation library of the ML-systems training and serving course.

Submodules: ``units``, ``hardware``, ``models``, ``training``, ``parallel``,
``serving``, ``viz`` (plots and widgets) and ``grading`` (nbgrader glue).
Everything inside the library is in base SI units (bytes, FLOPs, seconds).
"""

__version__ = "0.1.0"
