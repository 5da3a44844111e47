"""Labels and pairs that come from elsewhere: imported gold alignments and mined pairs sent to annotation."""
