"""The event log on PostgreSQL (the ``postgres`` extra): a log shared by brains on
several machines, behind the same ``EventLog`` protocol as the segment log.

Importing this package does not import the driver; opening a log does (and says
``pip install 'ocb[postgres]'`` when it is missing).
"""

from ocb_events.pg.blobs import SharedBlobStore
from ocb_events.pg.conn import Target, is_postgres_url, strip_password
from ocb_events.pg.listen import Listener
from ocb_events.pg.log import PostgresLog
from ocb_events.pg.verify import TableReport, verify_postgres

__all__ = [
    "Listener",
    "PostgresLog",
    "SharedBlobStore",
    "TableReport",
    "Target",
    "is_postgres_url",
    "strip_password",
    "verify_postgres",
]
