"""WebShop (Yao et al. 2022): an agent shops in a text web store for a product matching an
instruction, scored by how well the purchase matches (attributes, options, price, type).

The real WebShop needs a million-product index, a Java search server and a spaCy
model; this package ships a generated catalogue (``data/``, rebuilt by
``generate.py``) served by a BM25 index in SQLite FTS5, behind the real
environment's interface (``env.py``), so the same workflows also run against the
real one (``env: web_agent_site``).
"""

from reinforge.envs.webshop.catalogue import Catalogue, Product
from reinforge.envs.webshop.env import CatalogueWebShopEnv, WebShopEnv, make_env
from reinforge.envs.webshop.reward import purchase_reward
from reinforge.envs.webshop.session import WebShopEnvError
from reinforge.envs.webshop.workflow import StepWiseWebShopWorkflow, WebShopWorkflow

__all__ = [
    "Catalogue",
    "CatalogueWebShopEnv",
    "Product",
    "StepWiseWebShopWorkflow",
    "WebShopEnv",
    "WebShopEnvError",
    "WebShopWorkflow",
    "make_env",
    "purchase_reward",
]
