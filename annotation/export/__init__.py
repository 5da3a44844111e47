"""Gold dataset export: background jobs that stream a project's labels into files with a dataset card."""
