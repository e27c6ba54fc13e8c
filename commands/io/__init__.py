"""The I/O every console command shares: arguments, one-line errors, output folders, render folders."""
