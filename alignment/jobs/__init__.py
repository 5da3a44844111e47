"""One job framework for every background job kind: the abstract :class:`~alignment.jobs.models.Job` base,
``enqueue_on_commit`` (defers a task by name once the transaction commits) and the ``job_task`` wrapper."""
