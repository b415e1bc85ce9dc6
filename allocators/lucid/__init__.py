"""Lucid (ASPLOS '23): the Lucid scheduler and its interpretable models, on Helios' virtual clusters."""
