"""Real members of the fleet served through the twin's layers: a passthrough to a real device or
server (the fault layer, the journal and the verdicts in front), the recorder of a field session and
its replay."""
