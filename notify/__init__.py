"""Notifications: the events laptime sends, their JSON bodies, signatures, retry timing and
the addresses they may go to. Pure: the database and the network are app/services/webhooks.py."""
