"""verl-doctor's core: the entry model and corpus, signals, rules, fusion, the result schema."""

__version__ = "0.1.0"
