"""Models of the ``webapp`` app: the webhooks (webapp/webhooks/) and API tokens (webapp/accounts/) register here."""

from __future__ import annotations

from webapp.accounts.models import ApiToken  # noqa: F401 - registers these models with this app
from webapp.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery  # noqa: F401 - registers these models with this app
