"""Helpers shared by several plugins (upstream's ``plugins/helper`` and the selector/toleration code)."""
