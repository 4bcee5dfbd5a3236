"""pairrl eval: the best-of-k selection benchmark.

Pipeline: sample (or load a pool) -> label by execution -> run selectors -> metrics ->
integrity gate -> reports. Every stage is cached on disk under content keys, so a killed
run resumes where it stopped. The gate re-derives every label and comparison the run
needs and refuses (FAIL, non-zero exit under --strict) numbers made of failed calls.
"""
