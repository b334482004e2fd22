"""Provider clients (RunPod REST v2, Vast) and their emulators."""
