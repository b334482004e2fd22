"""The settings, on the ground floor: their values (`model`) and the vocabulary of reading them
(`parse`). Every other room stands on these; they import nothing of reaper's but each other.
Loading them from the environment, and each plugin's own, is `reaper.app.settings`'s job."""
