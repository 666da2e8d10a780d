import { createPinia } from 'pinia';
import { createApp } from 'vue';
import App from './App.vue';
import './styles.css';
import './review.css';
import './console.css';

createApp(App).use(createPinia()).mount('#app');
