"""The process: CLI, start-up wiring, informer handlers, leader election, logs."""
