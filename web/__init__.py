"""The judge's web app: pages, the JSON API, the worker API and the queue (see README.md)."""
