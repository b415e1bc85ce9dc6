"""Experiments as users run them: a grid of simulations from a TOML file (:mod:`.spec`), run and
resumed in local processes or on a Ray cluster (:mod:`.runner`), and their figures and page
(:mod:`.figures`, :mod:`.page`)."""
