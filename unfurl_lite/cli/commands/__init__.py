"""One module per group of commands; each is imported only when its command runs."""
