"""API tokens over the API: log in for a token, list my tokens, revoke one. Thin: webapp.accounts.services decides.

    POST   /api/auth/token/          {"username", "password"} -> {"token", "expires_at"} (a new token each time)
    GET    /api/auth/tokens/         my tokens (never the keys: only their hashes are stored)
    DELETE /api/auth/tokens/<id>/    revoke one of mine (404 for anyone else's)

The login authenticates through ``django.contrib.auth.authenticate`` with the Django
request, so django-axes counts its failures and locks a username+address out exactly as
on the login page (429 with a message; the axes middleware answers for a locked-out
request). A tighter request budget (the ``token_login`` throttle scope) sits on top.
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from webapp.accounts import selectors, services
from webapp.accounts.models import ApiToken
from webapp.api.access import is_schema_generation

LOGIN_FAILED = "Unable to log in with provided credentials."


class TokenLoginView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "token_login"

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField()
        password = serializers.CharField(trim_whitespace=False, style={"input_type": "password"})

    @extend_schema(
        summary="Log in for a new API token (send it as `Authorization: Token <token>`)",
        request=InputSerializer,
        responses={200: inline_serializer("TokenLogin", {"token": serializers.CharField(), "expires_at": serializers.DateTimeField(allow_null=True)})},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        incoming = self.InputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        # The Django request, not DRF's wrapper: axes marks it when it locks the username+address out.
        user = authenticate(request=request._request, **incoming.validated_data)
        if user is None:
            return Response({"non_field_errors": [LOGIN_FAILED]}, status=status.HTTP_400_BAD_REQUEST)
        created = services.api_token_create(user=user, name="POST /api/auth/token/")
        return Response({"token": created.key, "expires_at": created.token.expires_at})


class ApiTokenSerializer(serializers.ModelSerializer):
    expired = serializers.SerializerMethodField()
    current = serializers.SerializerMethodField(help_text="The token this request authenticated with.")

    class Meta:
        model = ApiToken
        fields = ["id", "name", "key_prefix", "created_at", "last_used_at", "expires_at", "expired", "current"]

    def get_expired(self, token: ApiToken) -> bool:
        return token.is_expired()

    def get_current(self, token: ApiToken) -> bool:
        auth = getattr(self.context.get("request"), "auth", None)
        return isinstance(auth, ApiToken) and auth.pk == token.pk


@extend_schema(summary="My API tokens, newest first (keys are never shown again)")
class ApiTokenListView(generics.ListAPIView):
    serializer_class = ApiTokenSerializer
    ordering_fields = ["created_at", "last_used_at", "expires_at"]

    def get_queryset(self):
        if is_schema_generation(self):
            return ApiToken.objects.none()
        return selectors.user_api_tokens(self.request.user)


@extend_schema(summary="Revoke one of my API tokens (it stops authenticating at once)")
class ApiTokenRevokeView(generics.DestroyAPIView):
    serializer_class = ApiTokenSerializer

    def get_queryset(self):
        if is_schema_generation(self):
            return ApiToken.objects.none()
        return selectors.user_api_tokens(self.request.user)

    def perform_destroy(self, instance: ApiToken) -> None:
        services.api_token_revoke(user=self.request.user, token_id=instance.pk)
