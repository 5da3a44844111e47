"""The sentence aligner: neural CRF (dense and pruned), paragraph alignment, the aligner itself, its training and adaptation, baselines."""
