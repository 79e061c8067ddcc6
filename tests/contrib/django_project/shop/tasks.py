"""Django tasks of the test project."""

from django_tasks import TaskContext, task

from shop.models import Order


@task()
def add(a: int, b: int) -> int:
    return a + b


@task()
def explode(message: str) -> None:
    raise LookupError(message)


@task(takes_context=True)
def whoami(context: TaskContext, tag: str) -> dict:
    return {"tag": tag, "attempt": context.attempt, "id": context.task_result.id}


@task()
async def double(x: int) -> int:
    return 2 * x


@task()
def count_orders() -> int:
    return Order.objects.count()
