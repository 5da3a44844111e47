"""The REST API (Django REST framework): serializers, viewsets and the OpenAPI schema."""
