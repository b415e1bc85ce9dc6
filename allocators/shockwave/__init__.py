"""Shockwave's policy (NSDI'23), its remaining-time predictor and Gandiva-Fair baseline."""
