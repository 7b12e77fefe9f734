# Attention Lab: one server (one Streamlit process). Several of them behind a load balancer with
# sticky sessions: see docker-compose.yml and docs/HOSTING.md.
#   docker build -t attention-lab .
#   docker run --rm -p 8501:8501 --cpus 1 --memory 1500m attention-lab
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # the hosted caps: one training slice at a time, training at most 25% of the time, small runs
    ATTENTION_LAB_HOSTED=1

WORKDIR /app
# dependencies first, so a code change does not reinstall torch (CPU wheel, see requirements.txt)
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
RUN useradd --create-home --uid 10001 lab && chown -R lab /app
USER lab

EXPOSE 8501
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=3)"
CMD ["streamlit", "run", "streamlit_app.py", "--server.address=0.0.0.0", "--server.port=8501"]
