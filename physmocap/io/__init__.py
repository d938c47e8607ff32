"""File formats: the only modules that read or write files of other tools."""
