"""The verbs: one module (or package) each, found by name by series.cli.

series/verbs/<verb>.py holds the verb's click command as `command`, its run() taking its
collaborators (the workspace, the forge, callbacks) as arguments, and its text and JSON
rendering. The module name is the verb with '-' as '_' (adopt-upstream: adopt_upstream;
a Python keyword gains a '_': import_). Modules starting with '_' are not verbs.
To add a verb, write one module here: nothing else lists it.
"""
