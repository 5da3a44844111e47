"""Project set-up: members, invites, roles, and each annotator's task list."""
