from __future__ import annotations

app_name = "webhooks"

urlpatterns: list = []
