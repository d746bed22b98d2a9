"""What a job leaves behind, in Unfurl's formats: the status in ensemble.yaml,
jobs.tsv, the job and changes files, the journal of a running job, resume of a killed
one, history over git, and the commit.
"""
