"""The Keepmind process: one instance per data dir (lock), the files that say where it runs
(server.json, token), the waitress server, the daemon that runs it all, and the client that finds
or starts it."""
