"""/v1/tenants: created and listed by the admin."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, status
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_session
from scheduler.api.errors import from_registry_error
from scheduler.api.schemas import TenantCreate, TenantCreated, TenantOut
from scheduler.registry import repository as repo

router = APIRouter(prefix="/v1/tenants", tags=["tenants"])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=TenantCreated)
def create_tenant(
    body: TenantCreate,
    request: Request,
    session: Session = Depends(get_session),
    _: auth.Principal = Depends(auth.require_admin),
) -> TenantCreated:
    token = auth.new_token(auth.TENANT_PREFIX)
    try:
        tenant = repo.create_tenant(
            session, body.name, auth.hash_token(token), request.app.state.clock()
        )
    except repo.RegistryError as exc:
        raise from_registry_error(exc) from exc
    session.commit()
    return TenantCreated(id=tenant.id, name=tenant.name, created_at=tenant.created_at, token=token)


@router.get("", response_model=list[TenantOut])
def list_tenants(
    session: Session = Depends(get_session), _: auth.Principal = Depends(auth.require_admin)
) -> list[TenantOut]:
    return [
        TenantOut(id=t.id, name=t.name, created_at=t.created_at) for t in repo.list_tenants(session)
    ]
