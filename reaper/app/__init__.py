"""The only place that loads and wires, above the plugins and the passes: the settings from the
environment and each plugin's reader (`settings`), SSM on AWS (`ssm`), every name reaper knows
(`known`), and the store, clients, notifier and clock of each entry point (`wiring`)."""
