"""WSGI entry point (gunicorn, uwsgi, or Django's runserver).

The URLconf, and with it every view module, is imported here rather than on the first request (Django's default):
about 1–2 s a process, which the first visitor of each web process would otherwise wait for. Under gunicorn's
preload (webapp/gunicorn_conf.py) the master does it once for all its workers.
"""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 - imports the URLconf now
