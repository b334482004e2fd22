"""What parses arguments, renders or serves: the command line, the HTTP route table, `serve`,
the demo, and the views (text tables and the JSON shapes of docs/commands.md) that read only the
typed results of the passes."""
