"""Sentence splits and merges made on screen: the segmentation layer over imported documents."""
