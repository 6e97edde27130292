"""A node's job from its start to nothing left (job_scope): the subreaper and sweep (reaper), the private folder
(leftovers), the keeper should the launcher die (job_keeper), the job's stop (job_signals), how it ended
(job_outcome)."""
