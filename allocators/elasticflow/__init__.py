"""ElasticFlow's planner (ASPLOS'23) and the baselines its artifact published: EDF, Gandiva, Themis, Tiresias."""
